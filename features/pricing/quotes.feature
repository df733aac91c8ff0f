Feature: Quotes
  The user is shown a price before confirming. A quote is bound to its price,
  its tariff and its expiry: it can be confirmed once, by the user it was given
  to, before it expires, and it cannot be altered.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |
    And the user holds 50 coins

  Scenario Outline: The price per copy falls with the number of copies
    When the user asks for <copies> copies
    Then the user is quoted <per copy> coins per copy, <total> coins in all

    Examples:
      | copies | per copy | total |
      | 1      | 5        | 5     |
      | 5      | 4        | 20    |
      | 10     | 3        | 30    |

  Scenario: A number of copies that is not offered cannot be quoted
    When the user asks for 3 copies
    Then the quote is refused because that number of copies is not offered

  Scenario: A quote confirmed in time sets aside its price
    Given the user was quoted 5 copies
    When 9 minutes pass
    And the user confirms the quote
    Then 20 coins are set aside for the order

  Scenario Outline: An expired quote is refused and nothing is set aside
    Given the user was quoted 5 copies
    When <time> pass
    And the user confirms the quote
    Then the confirmation is refused because the quote has expired
    And no coins are set aside
    And no job is waiting for a worker

    Examples:
      | time       |
      | 10 minutes |
      | 2 days     |

  Scenario Outline: A forged quote is refused and nothing is set aside
    Given the user was quoted 5 copies
    When the user confirms the quote <forgery>
    Then the confirmation is refused because the quote is not genuine
    And no coins are set aside
    And no job is waiting for a worker

    Examples:
      | forgery                                    |
      | with one character of its token changed    |
      | with a token signed with another secret    |
      | with the token of another quote            |

  Scenario: A quote used twice is refused the second time
    Given the user was quoted 5 copies
    When the user confirms the quote
    And the user confirms the quote again
    Then the confirmation is refused because the quote was already used
    And only one order has coins set aside: 20 coins
    And only one job is waiting for a worker

  Scenario: A quote belongs to the user it was given to
    Given the user was quoted 5 copies
    When another user confirms the quote
    Then the confirmation is refused because there is no such order for them
    And no coins are set aside

  Scenario: A quote on a retired tariff is refused
    Given the user was quoted 5 copies
    And a new price list replaces the current one, and quotes on the old one are no longer honoured:
      | copies | coins per copy |
      | 1      | 6              |
      | 5      | 5              |
    When the user confirms the quote
    Then the confirmation is refused because its tariff is no longer honoured
    And no coins are set aside

  Scenario: A quote on the previous tariff is honoured while it is still accepted
    Given the user was quoted 5 copies
    And a new price list replaces the current one, and quotes on the old one are still honoured:
      | copies | coins per copy |
      | 1      | 6              |
      | 5      | 5              |
    When the user confirms the quote
    Then 20 coins are set aside for the order

  Scenario: New quotes follow the new price list
    Given a new price list replaces the current one, and quotes on the old one are no longer honoured:
      | copies | coins per copy |
      | 1      | 6              |
      | 5      | 5              |
    When the user asks for 5 copies
    Then the user is quoted 5 coins per copy, 25 coins in all
